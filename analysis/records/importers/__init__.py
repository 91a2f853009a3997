"""Importers: one module per foreign log format, each producing canonical records."""
