from rca.core.modes import Mode


def test_only_active_governs():
    assert Mode.ACTIVE.governs
    assert not Mode.SHADOW.governs
    assert {m.value for m in Mode} == {"shadow", "active"}
