"""Unit tests of the collection's plugins. ansible-test units finds the collection by itself; under
plain pytest (scripts/test.sh) the collections folder above the collection is put on sys.path."""
import os
import sys

COLLECTIONS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
if os.path.basename(COLLECTIONS) == "collections" and COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
