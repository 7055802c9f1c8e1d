"""The paper's experiments: Abalone, Fashion-MNIST and Livedoor studies and their data loaders.

Kept outside the installed package: run them from a checkout with
``python -m experiments bench abalone|fmnist|livedoor ...``.
"""
