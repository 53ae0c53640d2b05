"""Model selection from the identification data alone (`tuning=cv`): time-blocked
cross-validation of preprocessing, friction shape, regressor columns and regularisation
(`selection.select_options`)."""
