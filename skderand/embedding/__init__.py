"""Learned, deterministic Johnson-Lindenstrauss embeddings."""

from skderand.embedding._learned_jl import LearnedJLTransformer

__all__ = ["LearnedJLTransformer"]
