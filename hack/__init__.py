"""Development scripts that are more than a shell driver: ``hack/image`` builds the operator's image
and runs :mod:`hack.imagecheck` on it (docs/operations.md, "Building and running the image")."""
