"""Expands the SAM transform of a template, offline.

Reads {"template": <the template as JSON, intrinsics in long form>,
"parameters": {name: value}} on stdin and writes the plain CloudFormation
template that AWS::Serverless-2016-10-31 makes of it, as JSON, on stdout.
functions/iam_test.go runs it with the Python that has aws-sam-translator
(`make test` installs it into .venv where python3 lacks it).

Local code is replaced by S3 URIs, as `sam package` would. No AWS call is made: the region comes from AWS_DEFAULT_REGION (set here
when missing), and the managed-policy map that the translator would list
from IAM is a stub holding the few AWS managed policies SAM may attach by
name (it attaches AWSLambdaBasicExecutionRole and AWSXrayWriteOnlyAccess by
ARN without asking the map).
"""

import json
import os
import sys

os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")

from samtranslator.translator.managed_policy_translator import ManagedPolicyLoader  # noqa: E402
from samtranslator.translator.transform import transform  # noqa: E402


class OfflinePolicies(ManagedPolicyLoader):
    """The managed-policy map without IAM."""

    def __init__(self):
        super().__init__(iam_client=None)

    def load(self):
        return {
            name: "arn:aws:iam::aws:policy/" + path
            for name, path in {
                "AWSLambdaBasicExecutionRole": "service-role/AWSLambdaBasicExecutionRole",
                "AWSXrayWriteOnlyAccess": "AWSXrayWriteOnlyAccess",
                "AWSXRayDaemonWriteAccess": "AWSXRayDaemonWriteAccess",
            }.items()
        }


def packaged(template):
    """What `sam package` does to code: a local CodeUri becomes an S3 URI."""
    function_globals = template.get("Globals", {}).get("Function", {})
    if isinstance(function_globals.get("CodeUri"), str):
        function_globals["CodeUri"] = "s3://parley-artifacts/code.zip"
    for name, resource in template.get("Resources", {}).items():
        props = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::Serverless::Function" and isinstance(props.get("CodeUri"), str):
            props["CodeUri"] = "s3://parley-artifacts/" + name + ".zip"
    return template


def main():
    request = json.load(sys.stdin)
    out = transform(packaged(request["template"]), request.get("parameters", {}), OfflinePolicies())
    json.dump(out, sys.stdout, indent=1, sort_keys=True, default=str)


if __name__ == "__main__":
    main()
