"""Estimators of the model from the history: ridge regression for linear models and exponential
weights for finite classes."""
