"""The report directory: report.json (and its one validating reader), junit.xml, summary.md.

Writers read the model and nothing else; annotation planning lives here too, because the
summary states what did not fit on the pull request.
"""
