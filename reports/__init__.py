"""The report sources and styles, shipped as package data (``selfmodel.reports``).

Nothing here is code: the folder is a package only so that :mod:`importlib.resources` finds
``self_modeling.qmd``, the page templates and the stylesheet in an installed wheel.
"""
