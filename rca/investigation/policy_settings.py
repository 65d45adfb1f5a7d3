"""The policy the settings choose for each investigation (`ROOTLINE_POLICY`)."""

from __future__ import annotations

from collections.abc import Callable

from rca.config import PolicyConfig
from rca.investigation.policy import ANTHROPIC, OfflinePolicy, Policy, Spend


def policy_factory(config: PolicyConfig, month: Callable[[], Spend] = Spend) -> Callable[[], Policy]:
    """What makes each investigation's policy under these settings (EngineConfig.policy); `month`
    reads this month's use so far when the policy is made (only for the Anthropic policy)."""
    if config.kind != ANTHROPIC:
        return OfflinePolicy

    def make() -> Policy:
        # The Anthropic SDK takes seconds to import: it is loaded only where its policy runs, so the
        # web server, the command line and offline workers start without it.
        from rca.investigation.anthropic_policy import make_policy

        return make_policy(config, month())

    return make
