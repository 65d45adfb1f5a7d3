"""One fault injector per recorded system (see rca.evaluation.inject for what they share)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

from rca.evaluation.inject import Injector
from rca.evaluation.injectors.changerca import ChangeRcaInjector
from rca.evaluation.injectors.nezha import NezhaInjector
from rca.evaluation.injectors.petshop import PetShopInjector
from rca.evaluation.injectors.rcd import RcdInjector

# system name (as in synthetic case ids) -> the injector for a data folder
INJECTORS: Mapping[str, Callable[[Path], Injector]] = MappingProxyType(
    {
        "changerca": ChangeRcaInjector,
        "petshop": PetShopInjector,
        "rcd": RcdInjector,
        "nezha-tt": lambda data: NezhaInjector(data, "TrainTicket"),
        "nezha-ob": lambda data: NezhaInjector(data, "OnlineBoutique"),
    }
)
