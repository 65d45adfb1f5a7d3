"""Graph persistence over the official neo4j Bolt driver (Neo4j 5 in production, ArcadeDB embedded)."""
