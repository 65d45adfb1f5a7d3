"""The configuration-change proposal: Kubernetes quantities, and the in-place edit of a manifest."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rca.actions.config_change import (
    CPU_LIMIT_FACTOR,
    MEMORY_LIMIT_FACTOR,
    REPLICA_STEP,
    ManifestError,
    Quantity,
    edit_manifest,
)
from rca.actions.diffs import modification

# --- quantities ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "value", "doubled"),
    [
        ("500m", Decimal("0.5"), "1000m"),
        ("1", Decimal(1), "2"),
        ("1.5", Decimal("1.5"), "3"),
        ("0.5", Decimal("0.5"), "1"),
        (".25", Decimal("0.25"), "0.5"),
        ("256Mi", Decimal(256 * 2**20), "512Mi"),
        ("1Gi", Decimal(2**30), "2Gi"),
        ("1.5Gi", Decimal(3 * 2**29), "3Gi"),
        ("100k", Decimal(100_000), "200k"),
        ("129M", Decimal(129_000_000), "258M"),
        ("134217728", Decimal(2**27), "268435456"),
        ("2e3", Decimal(2000), "4e3"),
        ("1E", Decimal(10) ** 18, "2E"),  # exa, not an exponent
        ("250u", Decimal("0.00025"), "500u"),
    ],
)
def test_a_quantity_is_read_in_base_units_and_multiplied_in_its_own(
    written: str, value: Decimal, doubled: str
) -> None:
    quantity = Quantity.parse(written)
    assert quantity.value == value
    assert str(quantity.times(2)) == doubled


@pytest.mark.parametrize(("a", "b"), [("1", "1000m"), ("0.5", "500m"), ("1Gi", "1024Mi"), ("1M", "1000k")])
def test_the_same_amount_written_in_other_units_is_equal(a: str, b: str) -> None:
    assert Quantity.parse(a).value == Quantity.parse(b).value


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "5 Mi", "Mi", "1mi", "1KiB", "0x10"])
def test_what_is_not_a_quantity_is_refused(text: str) -> None:
    with pytest.raises(ManifestError, match="is not a Kubernetes quantity"):
        Quantity.parse(text)


@given(
    number=st.decimals(min_value=Decimal("0.001"), max_value=Decimal(100_000), places=3),
    suffix=st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti"]),
    factor=st.integers(min_value=1, max_value=8),
)
def test_a_multiplied_quantity_reads_back_as_the_product(number: Decimal, suffix: str, factor: int) -> None:
    quantity = Quantity.parse(f"{number}{suffix}")
    assert Quantity.parse(str(quantity.times(factor))).value == quantity.value * factor


# --- the edit ---------------------------------------------------------------------------------------

MANIFEST = """# checkout: owned by team-payments
apiVersion: v1
kind: ConfigMap
metadata:
  name: checkout-config
data:
  cpu: 500m  # not a container's, never touched
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: checkout
spec:
  replicas: 2  # two zones
  template:
    spec:
      containers:
        - name: istio-proxy
          resources:
            limits: {cpu: "2", memory: 1Gi}
        - name: checkout
          image: registry.example.com/checkout:1.4.2
          resources:
            requests:
              cpu: 250m   # measured
              memory: '512Mi'
            limits:
              cpu: "0.25"
              memory: 1Gi   # OOM at 900Mi in March
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: checkout-db
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: postgres
          resources:
            limits:
              memory: 4Gi
"""


def changed(old: str, new: str) -> list[str]:
    """The lines a diff removes and adds."""
    return [line for line in modification("m.yaml", old, new).unified().splitlines()[3:] if line[:1] in "+-"]


def test_the_cpu_limit_of_the_container_named_after_the_entity_is_raised_and_an_equal_request_with_it() -> (
    None
):
    edit = edit_manifest(MANIFEST, "checkout", "cpu")
    assert (edit.workload, edit.container) == ("Deployment checkout", "checkout")
    assert [(c.what, c.line, c.old, c.new) for c in edit.changes] == [
        ("CPU limit", 28, "0.25", "0.5"),
        ("CPU request", 25, "250m", "500m"),  # equal to the limit; raised in its own unit
    ]
    assert CPU_LIMIT_FACTOR == 2
    # only those two lines change; quotes and comments are kept, the sidecar and ConfigMap untouched
    assert changed(MANIFEST, edit.text) == [
        "-              cpu: 250m   # measured",
        "+              cpu: 500m   # measured",
        '-              cpu: "0.25"',
        '+              cpu: "0.5"',
    ]


def test_the_memory_limit_is_raised_and_a_different_request_left_alone() -> None:
    edit = edit_manifest(MANIFEST, "checkout", "memory")
    assert [(c.what, c.old, c.new) for c in edit.changes] == [("memory limit", "1Gi", "2Gi")]
    assert MEMORY_LIMIT_FACTOR == 2
    assert changed(MANIFEST, edit.text) == [
        "-              memory: 1Gi   # OOM at 900Mi in March",
        "+              memory: 2Gi   # OOM at 900Mi in March",
    ]


@pytest.mark.parametrize("kind", ["latency", "errors", "pod_failure"])
def test_the_replicas_of_the_deployment_grow_by_one(kind: str) -> None:
    edit = edit_manifest(MANIFEST, "checkout", kind)
    assert (edit.workload, edit.container) == ("Deployment checkout", None)
    assert REPLICA_STEP == 1
    assert [(c.what, c.line, c.old, c.new) for c in edit.changes] == [("replicas", 14, "2", "3")]
    assert changed(MANIFEST, edit.text) == ["-  replicas: 2  # two zones", "+  replicas: 3  # two zones"]


def test_a_container_named_after_the_entity_is_found_in_a_workload_named_otherwise() -> None:
    text = MANIFEST.replace("  name: checkout\n", "  name: checkout-v2\n")
    edit = edit_manifest(text, "istio-proxy", "memory")
    assert (edit.workload, edit.container) == ("Deployment checkout-v2", "istio-proxy")
    # a flow-style mapping is edited in place too
    assert changed(text, edit.text) == [
        '-            limits: {cpu: "2", memory: 1Gi}',
        '+            limits: {cpu: "2", memory: 2Gi}',
    ]


def test_a_statefulset_gets_its_limit_raised_but_no_replica() -> None:
    edit = edit_manifest(MANIFEST, "checkout-db", "memory")
    assert (edit.workload, edit.container, edit.changes[0].new) == (
        "StatefulSet checkout-db",
        "postgres",
        "8Gi",
    )
    with pytest.raises(ManifestError, match="new member of a stateful set"):
        edit_manifest(MANIFEST, "checkout-db", "pod_failure")


def test_a_single_document_without_a_trailing_newline_keeps_its_ending() -> None:
    text = "kind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1"
    edit = edit_manifest(text, "web", "latency")
    assert edit.text == text.replace("replicas: 1", "replicas: 2")
    assert modification("m.yaml", text, edit.text).apply(text) == edit.text


@pytest.mark.parametrize(
    ("text", "entity", "kind", "message"),
    [
        (
            MANIFEST,
            "payments",
            "cpu",
            "holds no Deployment or StatefulSet named payments nor one with a container",
        ),
        (
            MANIFEST,
            "checkout-config",
            "cpu",
            "it holds ConfigMap checkout-config, Deployment checkout, Stateful",
        ),
        (MANIFEST, "checkout-db", "cpu", "container postgres of StatefulSet checkout-db sets no CPU limit"),
        (
            MANIFEST.replace("  replicas: 2  # two zones\n", ""),
            "checkout",
            "latency",
            "Deployment checkout sets no replicas",
        ),
        (
            MANIFEST.replace("        - name: checkout\n", "        - name: app\n"),
            "checkout",
            "cpu",
            r"has 2 containers \(istio-proxy, app\) and none is named checkout",
        ),
        (MANIFEST.replace("replicas: 2 ", 'replicas: "2"'), "checkout", "errors", "not a positive count"),
        (
            MANIFEST.replace('cpu: "0.25"', "cpu: lots"),
            "checkout",
            "cpu",
            "'lots' is not a Kubernetes quantity",
        ),
        (MANIFEST.replace("memory: 1Gi   #", "memory: 0   #"), "checkout", "memory", "is 0, not a positive"),
        ("kind: Deployment\nmetadata: {name: web\n", "web", "cpu", "not valid YAML"),
        (
            "kind: Deployment\nmetadata: {name: web, annotations: {floor: &n 2}}\nspec: {replicas: *n}\n",
            "web",
            "latency",
            "the replica count of Deployment web is an alias of a value anchored elsewhere",
        ),
        (
            MANIFEST.replace("limits: {cpu", "limits: &shared {cpu").replace(
                '            limits:\n              cpu: "0.25"\n'
                "              memory: 1Gi   # OOM at 900Mi in March\n",
                "            limits: *shared\n",
            ),
            "checkout",
            "memory",
            "the memory limit of the container checkout of Deployment checkout is an alias",
        ),
        (
            MANIFEST + "---\nkind: StatefulSet\nmetadata:\n  name: checkout\n",
            "checkout",
            "cpu",
            r"2 workloads named checkout \(Deployment checkout, StatefulSet checkout\)",
        ),
        (
            "kind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n"
            "        - name: web\n          resources:\n            limits:\n              cpu: >-\n"
            "                500m\n",
            "web",
            "cpu",
            "not written as a one-line value",
        ),
    ],
)
def test_a_manifest_that_offers_nothing_to_change_says_what_is_missing(
    text: str, entity: str, kind: str, message: str
) -> None:
    with pytest.raises(ManifestError, match=message):
        edit_manifest(text, entity, kind)
