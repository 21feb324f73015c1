"""The flake dashboard: a static site built from the history database.

``collect`` reads what the page shows from the store (the window's scores, each flaky
test's runs and weekly trend, the failure groups), ``site`` writes the page. The HTML
machinery (inert data, hashed inline blocks, DOM drawing) is the report page's.
"""
