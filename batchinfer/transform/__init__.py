"""SageMaker Batch Transform semantics for one file, independent of how the model is called.

Standard library only: the local engine, the processing container and the Plan Lambda use it.
"""
