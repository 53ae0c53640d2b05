"""Model selection from the identification data alone (`tuning=cv`): time-blocked
cross-validation of preprocessing, friction shape, regressor columns and regularisation.

folds.py            which samples form each fold (blocks of the motion, or whole recordings)
block_factors.py    per fold, triangular factors of every candidate column at once
cross_validation.py held-out error of a column set and regulariser from merged factors
search.py           the candidates tried, in stages, and the table of their CV RMSE
selection.py        the step the pipeline calls: choose, and return the chosen config
"""
