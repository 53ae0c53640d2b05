"""mode=rehearse: plant known changes, identify, check they are recovered."""
