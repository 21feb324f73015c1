"""What a change touched: the diff against a merge base, as changed line ranges per file.

Burn-in (the tests a pull request adds or changes) and blame (did a failure run the change)
both read it; verify-fix will too.
"""
