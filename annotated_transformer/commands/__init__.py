"""The command-line commands: each module parses arguments and makes one call into the package."""
