"""The machine layer: which device, which precision, atomic files, ranks under torchrun.

Everything above it asks these modules instead of reading the hardware itself."""
