"""Small utilities every layer uses: atomic writes, paths, progress lines, TOML error locations, the ArviZ operations."""
