"""An import-linter contract type of this project's: the modules the Lambdas load import only
the standard library and the packages the Lambda runtime ships (boto3, botocore).

The modules loaded are the handlers in ``handlers`` (a directory of top-level modules,
``lambda/``) and every module of the root packages they import, followed through the
graph (imports inside functions count too, as they may run in a Lambda).
"""

import ast
import sys
from pathlib import Path

import grimp
from importlinter import Contract, ContractCheck, fields, output


class RuntimeOnlyContract(Contract):
    type_name = "runtime_only"

    handlers = fields.StringField()
    allowed_external = fields.SetField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        allowed = set(self.allowed_external) | set(sys.stdlib_module_names)  # type: ignore[arg-type]
        # each package not allowed -> the handlers that load it, and one chain that does
        broken: dict[str, tuple[list[str], list[str]]] = {}
        for handler in sorted(Path(str(self.handlers)).glob("*.py")):
            for module in sorted(_imports(handler)):
                internal = _is_internal(graph, module)
                loaded = graph.find_upstream_modules(module) if internal else {module}
                for name in sorted(loaded):
                    package = name.split(".")[0]
                    if _is_internal(graph, name) or package in allowed:
                        continue
                    chain = graph.find_shortest_chain(module, name) if internal else None
                    handlers, _ = broken.setdefault(package, ([], list(chain or [module])))
                    if handler.name not in handlers:
                        handlers.append(handler.name)
        return ContractCheck(kept=not broken, warnings=[], metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for package, (handlers, chain) in sorted(check.metadata["broken"].items()):
            output.print_error(f"{package} is loaded by {', '.join(handlers)}:", bold=True)
            output.indent_cursor()
            output.print_error(" -> ".join(chain), bold=False)
            output.new_line()


def _is_internal(graph: grimp.ImportGraph, module: str) -> bool:
    """Whether ``module`` belongs to the graph's root packages (external packages are in
    the graph as squashed modules; the handlers' own standard library imports are not)."""
    return module in graph.modules and not graph.is_module_squashed(module)


def _imports(path: Path) -> set[str]:
    """The modules ``path`` imports, by absolute name."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found
