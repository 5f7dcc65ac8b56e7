B
scan_stateJ ºØ>”ˆË¾ê1‚?‰·’?l+î¿bG’?vo‡?›?