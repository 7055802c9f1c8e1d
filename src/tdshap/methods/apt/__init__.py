"""The thresholding bandit behind TDShap: APT state, chain sampling, thresholds, guarantee."""
