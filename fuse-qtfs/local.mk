# Filled in by the program's own issue.
