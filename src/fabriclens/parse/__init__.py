"""Pure parsers: text of real tools -> typed records. They never raise on unknown input."""
