"""The report: render Quarto sources from saved results (never refits), the built-in renderer, the generated methods paragraph, the section functions."""
