"""The request API Gateway sends `well-known` for a GET (an HTTP API 2.0 event), shared by the
Python peers that fetch our discovery document and JWKS through the executable itself."""


def http_api_event(path, user_agent="python-peer"):
    return {
        "version": "2.0", "routeKey": "GET " + path, "rawPath": path, "rawQueryString": "",
        "headers": {"accept": "application/json"},
        "requestContext": {"http": {"method": "GET", "path": path, "protocol": "HTTP/1.1",
                                    "sourceIp": "203.0.113.7", "userAgent": user_agent},
                           "requestId": "peer", "stage": "$default"},
        "isBase64Encoded": False,
    }
