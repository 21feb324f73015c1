"""Code that runs inside the tested interpreter: the injected plugin and the fork server's child.

It imports only the standard library (an import contract says so): it must load in any
Python the user's tests run under, beside any package they install.
"""
