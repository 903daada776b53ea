"""Validates an OpenAPI document with openapi-spec-validator (an independent peer of
OpenAPIDocument.swift). Prints {"valid": true} or {"valid": false, "error": "..."}; exits 0 either
way, so that the test reads the verdict (a missing package is an exit 1)."""
import json
import sys

from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename

document, _ = read_from_filename(sys.argv[1])
try:
    validate(document)
    print(json.dumps({"valid": True}))
except Exception as error:  # the validator's own error types vary by version
    print(json.dumps({"valid": False, "error": str(error)[:500]}))
