"""The `roofline` command: one-off questions (ops, totals, ridge, plan, measure, list) answered from the library."""
from .app import main

__all__ = ["main"]
