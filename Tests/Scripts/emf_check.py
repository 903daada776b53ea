#!/usr/bin/env python3
"""Checks CloudWatch Embedded Metric Format lines as CloudWatch would take them, with two parties
that are not us: the EMF specification's structure, as a JSON schema
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html),
and the validators of AWS's own `aws-embedded-metrics` library (namespace, dimension sets, metric
names, units and values, timestamps). Then sums the metrics by their dimensions.

Usage: emf_check.py LINES_FILE
Prints {"lines": N, "problems": [...], "requests": {"<handler> <outcome>": count}, "namespaces": [...]}.
"""
import json
import sys
from datetime import datetime, timezone

import jsonschema
from aws_embedded_metrics import validator
from aws_embedded_metrics.storage_resolution import StorageResolution

# The specification's root node, metric directive and metric definition.
SCHEMA = {
    "type": "object",
    "required": ["_aws"],
    "properties": {
        "_aws": {
            "type": "object",
            "required": ["Timestamp", "CloudWatchMetrics"],
            "properties": {
                "Timestamp": {"type": "integer", "minimum": 0},
                "CloudWatchMetrics": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["Namespace", "Dimensions", "Metrics"],
                        "properties": {
                            "Namespace": {"type": "string", "minLength": 1, "maxLength": 255},
                            "Dimensions": {
                                "type": "array",
                                "items": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 250},
                                          "maxItems": 30},
                            },
                            "Metrics": {
                                "type": "array",
                                "maxItems": 100,
                                "items": {
                                    "type": "object",
                                    "required": ["Name"],
                                    "properties": {
                                        "Name": {"type": "string", "minLength": 1, "maxLength": 1024},
                                        "Unit": {"type": "string"},
                                        "StorageResolution": {"enum": [1, 60]},
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def check(document):
    problems = []
    try:
        jsonschema.validate(document, SCHEMA)
    except jsonschema.ValidationError as error:
        return [f"schema: {error.message}"]
    metadata = document["_aws"]
    try:
        validator.validate_timestamp(datetime.fromtimestamp(metadata["Timestamp"] / 1000, tz=timezone.utc))
    except Exception as error:  # noqa: BLE001: the library's own exception types
        problems.append(f"timestamp: {error}")
    for directive in metadata["CloudWatchMetrics"]:
        try:
            validator.validate_namespace(directive["Namespace"])
            for dimension_set in directive["Dimensions"]:
                # Every dimension a set names is a string member of the root (the specification's
                # "target members").
                values = {name: document.get(name) for name in dimension_set}
                missing = [name for name, value in values.items() if not isinstance(value, str)]
                if missing:
                    problems.append(f"dimensions {missing} are not string members of the line")
                    continue
                validator.validate_dimension_set(values)
            seen = {}
            for metric in directive["Metrics"]:
                value = document.get(metric["Name"])
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    problems.append(f"metric {metric['Name']} has no numeric value")
                    continue
                validator.validate_metric(metric["Name"], value, metric.get("Unit"),
                                          StorageResolution(metric.get("StorageResolution", 60)), seen)
                seen[metric["Name"]] = StorageResolution(metric.get("StorageResolution", 60))
        except Exception as error:  # noqa: BLE001
            problems.append(f"{type(error).__name__}: {error}")
    return problems


def main():
    with open(sys.argv[1]) as handle:
        lines = [line for line in handle.read().splitlines() if line.strip()]
    problems, requests, namespaces = [], {}, set()
    for number, line in enumerate(lines, 1):
        try:
            document = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"line {number}: not JSON ({error})")
            continue
        problems += [f"line {number}: {problem}" for problem in check(document)]
        for directive in document.get("_aws", {}).get("CloudWatchMetrics", []):
            namespaces.add(directive.get("Namespace"))
        key = f"{document.get('handler')} {document.get('outcome')}"
        requests[key] = requests.get(key, 0) + document.get("requests", 0)
    print(json.dumps({"lines": len(lines), "problems": problems, "requests": requests, "namespaces": sorted(namespaces)}))


if __name__ == "__main__":
    main()
