"""Scoring many candidates: a bounded window of work in flight, here or on an executor's
workers (each worker keeping an Evaluator, and so a warm parent, of its own)."""
