"""The flake history: runs ingested from report.json files, and the scores computed over them."""
