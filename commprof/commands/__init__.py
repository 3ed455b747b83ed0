"""The application layer: one function per command that does the whole job and returns a typed
result (commprof.results) in an Outcome. The CLI only declares options, calls one of these, and
hands the outcome to commprof.render; tests and other programs call them directly."""
