"""Results analysis: the paper's statistics and better ones (survival, RMST), reports, figures, exports."""
