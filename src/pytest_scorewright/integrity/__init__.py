"""The parent's judgement: the verdict on each run from its messages (verdict.py), integrity
reasons from every source (reasons.py), anchored values compared (anchors.py), and the
static scan of the candidate's source (static_scan.py). Runs only in the trusted parent."""
