"""The HTML pages: ``report.html`` of a report directory, and what every page shares.

A page is one self-contained file: its data as JSON in a ``<script type="application/json">``
block, its scripts and styles inline and allowed by their hashes in a strict
Content-Security-Policy, and everything drawn with DOM calls that treat data as text.
"""
