"""Real servers for fluvial's connector tests and for users trying the connector examples (`make services`,
`make kafka`): each module starts one server on 127.0.0.1 with a free port and a temporary data directory and
stops it by its PID. Not part of the installed package: it serves the repository's tests and examples.

`services.server` holds what every launcher shares (free ports, waiting until a port accepts, stopping by PID);
one module per server (kafka, nats, mosquitto, postgres) builds on it.
"""
