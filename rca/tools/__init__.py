"""The evidence tools: one package per tool (`rca.tools.<name>`), each declared by its `ToolSpec`.

The investigation reaches them through `rca.tools.registry`, the context and results of
`rca.tools.base`, the facts of `rca.tools.facts`, the fault kinds of `rca.tools.faults` and the graph
queries of `rca.tools.graph`; the rest is each tool's own.
"""
