"""llm-roofline: roofline analysis of LLM inference (see the README)."""
