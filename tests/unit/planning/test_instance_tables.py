"""The dated tables plans are made with: instance specifications and indicative prices."""

import pytest

from batchinfer.errors import ValidationError
from batchinfer.instances.price_table import PRICES, UNPRICED_FAMILIES
from batchinfer.instances.prices import hourly_price, parse_price_overrides, table_price
from batchinfer.instances.specs import SPECS, instance_spec
from batchinfer.instances.supported import accepted

REGIONS = ("us-east-1", "us-west-2", "eu-west-1", "eu-central-1")


@pytest.mark.parametrize(
    ("name", "vcpus", "memory", "gpus"),
    [
        ("ml.m5.xlarge", 4, 16, 0),
        ("ml.c5.18xlarge", 72, 144, 0),
        ("ml.r5.large", 2, 16, 0),
        ("ml.m6i.32xlarge", 128, 512, 0),
        ("ml.g4dn.12xlarge", 48, 192, 4),
        ("ml.g5.48xlarge", 192, 768, 8),
        ("ml.p3.2xlarge", 8, 61, 1),
        ("ml.g6.12xlarge", 48, 192, 4),
        ("ml.g6e.48xlarge", 192, 1536, 8),
        ("ml.inf2.48xlarge", 192, 768, 12),
    ],
)
def test_known_specifications(name, vcpus, memory, gpus):
    spec = instance_spec(name)
    assert (spec.vcpus, spec.memory_gib, spec.gpus) == (vcpus, memory, gpus)


def test_an_unknown_type_is_named_with_the_nearest_known_ones():
    with pytest.raises(ValidationError) as raised:
        instance_spec("ml.m5.xlarg")
    message = str(raised.value)
    assert "'ml.m5.xlarg'" in message and "ml.m5.xlarge" in message.split("nearest:")[1]


def test_every_type_is_one_sagemaker_accepts_for_transform_or_processing():
    offered = set(accepted("transform")) | set(accepted("processing"))
    assert len(SPECS) >= 40
    assert set(SPECS) <= offered


def test_every_region_prices_every_type_and_more_vcpus_cost_more_within_a_family():
    for region in REGIONS:
        priced = {name for name in SPECS if table_price(name, region) is not None}
        unpriced = {name for name in SPECS if name.split(".")[1] in UNPRICED_FAMILIES}
        assert priced == set(SPECS) - unpriced, region
    for region in PRICES:
        for name, spec in SPECS.items():
            family = name.split(".")[1]
            if spec.gpus:
                continue  # GPU sizes differ in GPUs, not only vCPUs
            larger = [
                n for n, s in SPECS.items() if n.split(".")[1] == family and s.vcpus > spec.vcpus
            ]
            for other in larger:
                assert table_price(other, region) > table_price(name, region), (region, name, other)


def test_a_family_without_a_list_price_asks_for_one():
    from batchinfer.planning.advice import no_price

    assert table_price("ml.g6.xlarge", "us-east-1") is None
    assert no_price("ml.g6.xlarge", "us-east-1").message == (
        "no price for ml.g6.xlarge in us-east-1 (the table has no list price for the g6 "
        "family); pass --price ml.g6.xlarge=USD_PER_HOUR"
    )


def test_an_override_wins_and_a_missing_region_has_no_price():
    overrides = parse_price_overrides(["ml.m5.xlarge=0.5", "ml.c5.xlarge=0"])
    assert overrides == {"ml.m5.xlarge": 0.5, "ml.c5.xlarge": 0.0}
    assert hourly_price("ml.m5.xlarge", "us-east-1", overrides).usd_per_hour == 0.5
    assert hourly_price("ml.m5.xlarge", "us-east-1", {}).usd_per_hour == table_price(
        "ml.m5.xlarge", "us-east-1"
    )
    assert hourly_price("ml.m5.xlarge", "ap-south-2", {}) is None


@pytest.mark.parametrize(
    "bad", ["ml.m5.xlarge", "m5.xlarge=1", "ml.m5.xlarge=-1", "ml.m5.xlarge=x"]
)
def test_malformed_overrides_are_refused_naming_the_option(bad):
    with pytest.raises(ValidationError, match="--price"):
        parse_price_overrides([bad])
