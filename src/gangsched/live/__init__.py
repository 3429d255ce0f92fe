"""Live mode: gangsched against a real API server, and the local control plane its tests run on."""
