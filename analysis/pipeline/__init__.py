"""The pipeline: stages tied together, the run's typed state, results.json, the output folder, the unchanged-rerun shortcut, the model stage."""
