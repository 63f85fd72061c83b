"""Smooth neural networks trained to certified SOSPs, for structure discovery."""

from skderand.neural._structure_discovery import (
    StructureDiscoveryClassifier,
    StructureDiscoveryRegressor,
)

__all__ = ["StructureDiscoveryClassifier", "StructureDiscoveryRegressor"]
