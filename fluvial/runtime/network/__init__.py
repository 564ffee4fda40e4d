"""The network under the data plane and the control plane: authenticated connections carrying frames.

`auth` proves both ends hold the cluster's secret before any byte is unpickled; `framing` cuts a byte stream
into checked frames; `connection` pairs them into a Connection and a Listener; `channels` builds the remote
channels of the data plane on top, with credit-based flow control."""
