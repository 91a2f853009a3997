"""selfmodel's pipeline: ingest, describe, fit, test and report LLM self-prediction."""

__version__ = "0.1.0"
