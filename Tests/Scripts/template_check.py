#!/usr/bin/env python3
"""Infra/template.yaml as CloudFormation would deploy it: translated by AWS's own SAM translator
(aws-sam-translator, the library `sam deploy` and CloudFormation's transform run), its intrinsic
functions resolved for one set of parameter values, then checked against what the handlers
expect. Used by TemplateTranslationTests; runnable by hand.

Usage: template_check.py TEMPLATE PARAMETERS_JSON HANDLERS_JSON DOC [DOC...]
  PARAMETERS_JSON: {"Issuer": "https://...", ...} (parameters left out take their defaults)
  HANDLERS_JSON:   ["signin", ...], each deployed from ../dist/<handler>.zip
  DOC:             Markdown files whose tables document the configuration variables

Prints one JSON object:
  {"functions": {"<handler>": {"logicalId", "environment": {...}, "routes": [{"method", "path", "authorizer"}]}},
   "routes": [{"method", "path", "authorizer", "function", "handler"}],  every route of the API; handler null when
                                                                          its function is not one of ../dist/<handler>.zip
   "authorizer": {"type", "issuer", "audiences", "identitySource"},
   "problems": ["..."]}
Exits non-zero only when the template cannot be translated at all.
"""
import json
import os
import re
import sys

from cfnlint.decode import cfn_yaml
from samtranslator.translator.transform import transform

DIST = re.compile(r"^\.\./dist/([a-z0-9-]+)\.zip$")
ACCOUNT, REGION, PARTITION = "123456789012", "us-east-1", "aws"


class NoManagedPolicies:
    """The translator asks for AWS managed policies only for SAM policy names; ours are ARNs."""

    def load(self):
        return {}


class Resolver:
    """Ref, Fn::If, Fn::Sub, Fn::GetAtt, Fn::Join and the condition functions, for one parameter set.
    A resource stands for itself by a placeholder that names it, so that wiring can be checked."""

    def __init__(self, template, parameters):
        self.parameters = {name: str(spec.get("Default", "")) for name, spec in template.get("Parameters", {}).items()}
        self.parameters.update(parameters)
        self.parameters.update({"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": PARTITION,
                                "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": "lambda-auth"})
        self.conditions = template.get("Conditions", {})
        self.resources = template.get("Resources", {})

    def ref(self, name):
        if name in self.parameters:
            return self.parameters[name]
        if name in self.resources:
            return f"<{name}>"
        raise ValueError(f"Ref to unknown name {name}")

    def condition(self, name):
        return bool(self.value(self.conditions[name]))

    def value(self, node):
        if isinstance(node, list):
            return [self.value(item) for item in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, argument), = node.items()
            if key == "Ref":
                return self.ref(argument)
            if key == "Fn::If":
                name, when_true, when_false = argument
                chosen = when_true if self.condition(name) else when_false
                return None if chosen == {"Ref": "AWS::NoValue"} else self.value(chosen)
            if key == "Fn::Equals":
                left, right = self.value(argument)
                return str(left) == str(right)
            if key == "Fn::Not":
                return not self.value(argument[0])
            if key == "Fn::And":
                return all(self.value(item) for item in argument)
            if key == "Fn::Or":
                return any(self.value(item) for item in argument)
            if key == "Condition":
                return self.condition(argument)
            if key == "Fn::GetAtt":
                resource, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
                return f"<{resource}.{attribute}>"
            if key == "Fn::Join":
                separator, items = argument
                return separator.join(str(item) for item in self.value(items))
            if key == "Fn::Sub":
                text, variables = (argument, {}) if isinstance(argument, str) else argument
                variables = {name: self.value(item) for name, item in variables.items()}

                def substitute(match):
                    name = match.group(1)
                    if name in variables:
                        return str(variables[name])
                    if "." in name:
                        resource, attribute = name.split(".", 1)
                        return f"<{resource}.{attribute}>"
                    return str(self.ref(name))
                return re.sub(r"\$\{([^}!]+)\}", substitute, text)
        return {key: self.value(item) for key, item in node.items()}


def documented_variables(paths):
    """Every AUTH_* or AWS_* name in backticks on a table row of the given Markdown files."""
    names = set()
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.lstrip().startswith("|"):
                    names.update(re.findall(r"`((?:AUTH|AWS)_[A-Z0-9_]+)`", line))
    return names


def main():
    template_path, parameters_json, handlers_json, *docs = sys.argv[1:]
    parameters, handlers = json.loads(parameters_json), json.loads(handlers_json)
    source = json.loads(json.dumps(cfn_yaml.load(template_path), default=str))

    # What `sam package` does before the transform: local CodeUri paths become S3 locations.
    handler_of = {}
    for logical_id, resource in source["Resources"].items():
        uri = resource.get("Properties", {}).get("CodeUri")
        if resource["Type"] == "AWS::Serverless::Function" and isinstance(uri, str):
            match = DIST.match(uri)
            if match:
                handler_of[logical_id] = match.group(1)
            resource["Properties"]["CodeUri"] = f"s3://lambda-auth-dist/{os.path.basename(uri)}"

    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    translated = transform(source, dict(parameters), NoManagedPolicies())
    resolve = Resolver(translated, parameters)
    problems = []

    apis = [resource for resource in translated["Resources"].values() if resource["Type"] == "AWS::ApiGatewayV2::Api"]
    if len(apis) != 1:
        problems.append(f"expected one HTTP API, found {len(apis)}")
        print(json.dumps({"functions": {}, "routes": [], "authorizer": None, "problems": problems}))
        return
    body = apis[0]["Properties"]["Body"]
    # Resolved first: the Authorizer parameter chooses the scheme by a condition.
    schemes = resolve.value(body.get("components", {}).get("securitySchemes", {}))
    authorizers = {name: scheme["x-amazon-apigateway-authorizer"] for name, scheme in schemes.items()
                   if "x-amazon-apigateway-authorizer" in scheme}
    authorizer = None
    if len(authorizers) != 1:
        problems.append(f"expected one authorizer, found {sorted(authorizers)}")
    else:
        (authorizer_name, config), = authorizers.items()
        jwt_config = config.get("jwtConfiguration", {})
        authorizer = {"name": authorizer_name, "type": config.get("type"), "issuer": jwt_config.get("issuer"),
                      "audiences": [item for item in jwt_config.get("audience", []) if item is not None],
                      "identitySource": config.get("identitySource")}
        if config.get("type") == "request":
            # A Lambda authorizer: the function it invokes, and how API Gateway calls it.
            target = re.search(r"<(\w+)\.Arn>", str(config.get("authorizerUri", "")))
            authorizer.update({"function": target.group(1) if target else None,
                               "payloadFormatVersion": config.get("authorizerPayloadFormatVersion"),
                               "simpleResponses": config.get("enableSimpleResponses"),
                               "resultTtl": config.get("authorizerResultTtlInSeconds")})

    routes_of = {}
    for path, methods in body.get("paths", {}).items():
        for method, operation in methods.items():
            uri = json.dumps(operation.get("x-amazon-apigateway-integration", {}).get("uri"))
            target = re.search(r"\$\{(\w+)\.Arn\}", uri)
            if not target:
                problems.append(f"{method.upper()} {path} is not integrated with a function")
                continue
            guarded = any(authorizer and authorizer["name"] in requirement for requirement in operation.get("security", []))
            routes_of.setdefault(target.group(1), []).append({"method": method.upper(), "path": path, "authorizer": guarded})

    documented = documented_variables(docs)
    deployed = {logical_id: resource for logical_id, resource in translated["Resources"].items()
                if resource["Type"] == "AWS::Lambda::Function"
                and ("Condition" not in resource or resolve.condition(resource["Condition"]))}
    if authorizer and authorizer["type"] == "request":
        # The Lambda authorizer checks what the functions sign with their own variables.
        target = deployed.get(authorizer.get("function") or "")
        environment = resolve.value(target["Properties"].get("Environment", {}).get("Variables", {})) if target else {}
        authorizer["issuer"] = environment.get("AUTH_ISSUER")
        audience = environment.get("AUTH_ACCESS_TOKEN_AUDIENCE") or environment.get("AUTH_ISSUER")
        authorizer["audiences"] = [audience] if audience else []
        authorizer["handler"] = handler_of.get(authorizer.get("function") or "")
    functions = {}
    for logical_id, resource in deployed.items():
        environment = resolve.value(resource["Properties"].get("Environment", {}).get("Variables", {}))
        environment = {name: str(value) for name, value in environment.items() if value is not None}
        handler = handler_of.get(logical_id)
        undocumented = sorted(name for name in environment if name not in documented)
        if undocumented:
            problems.append(f"{logical_id}'s environment names undocumented variables: {', '.join(undocumented)}")
        if handler is None:
            continue
        routes = sorted(routes_of.get(logical_id, []), key=lambda route: (route["path"], route["method"]))
        functions[handler] = {"logicalId": logical_id, "environment": environment, "routes": routes}
        if authorizer:
            if environment.get("AUTH_ISSUER") != authorizer["issuer"]:
                problems.append(f"{handler} signs iss {environment.get('AUTH_ISSUER')!r}; the authorizer requires {authorizer['issuer']!r}")
            audience = environment.get("AUTH_ACCESS_TOKEN_AUDIENCE") or environment.get("AUTH_ISSUER")
            if audience not in authorizer["audiences"]:
                problems.append(f"{handler} signs aud {audience!r}; the authorizer accepts {authorizer['audiences']!r}")
        if environment.get("AUTH_SIGNING_ALGORITHM") != "RS256":
            problems.append(f"{handler} does not require RS256 signing keys (AUTH_SIGNING_ALGORITHM), which the authorizer needs")

    # A function fed by the table's stream (events) has no route; its mapping must let Lambda
    # redeliver exactly what failed and give up on nothing silently (contract section 22).
    streams_of = {}
    for logical_id, resource in translated["Resources"].items():
        if resource["Type"] != "AWS::Lambda::EventSourceMapping":
            continue
        properties = resource["Properties"]
        target = json.dumps(properties.get("FunctionName"))
        function = next((name for name in handler_of if f'"{name}"' in target), None)
        if function is None:
            continue
        streams_of.setdefault(function, []).append(properties)
        handler = handler_of[function]
        if "ReportBatchItemFailures" not in properties.get("FunctionResponseTypes", []):
            problems.append(f"{handler}'s stream mapping does not report batch item failures")
        if properties.get("BisectBatchOnFunctionError") is not True:
            problems.append(f"{handler}'s stream mapping does not bisect a failing batch")
        if not properties.get("MaximumRecordAgeInSeconds"):
            problems.append(f"{handler}'s stream mapping has no maximum record age")
        if not properties.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination"):
            problems.append(f"{handler}'s stream mapping has no on-failure destination")
    lambda_authorizer = authorizer["handler"] if authorizer and authorizer["type"] == "request" else None
    for handler in handlers:
        if handler not in functions:
            # The authorizer is deployed when the Authorizer parameter is lambda, and only then.
            if not (handler == "authorizer" and lambda_authorizer is None):
                problems.append(f"no function deploys {handler} (../dist/{handler}.zip)")
        elif not functions[handler]["routes"] and handler != lambda_authorizer and not streams_of.get(functions[handler]["logicalId"]):
            problems.append(f"{handler} has no route")
    for handler in functions:
        if handler not in handlers:
            problems.append(f"a function deploys {handler}, which is not a handler")
    if authorizer and authorizer["type"] == "request":
        if (authorizer["identitySource"] != "$request.header.Authorization" or authorizer["payloadFormatVersion"] != "2.0"
                or authorizer["simpleResponses"] is not True or authorizer["resultTtl"] != 0 or lambda_authorizer != "authorizer"):
            problems.append(f"the Lambda authorizer is not the authorizer function on the Authorization header, "
                            f"payload 2.0, simple responses, no result cache: {authorizer}")
    elif authorizer and (authorizer["type"] != "jwt" or authorizer["identitySource"] != "$request.header.Authorization"):
        problems.append(f"the authorizer is not a JWT authorizer on the Authorization header: {authorizer}")

    every_route = sorted(({**route, "function": logical_id, "handler": handler_of.get(logical_id)}
                          for logical_id, routes in routes_of.items() for route in routes),
                         key=lambda route: (route["path"], route["method"]))
    print(json.dumps({"functions": functions, "routes": every_route, "authorizer": authorizer, "problems": problems}))


if __name__ == "__main__":
    main()
