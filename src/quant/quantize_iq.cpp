// Quantisers for the IQ (importance-grid) formats.
