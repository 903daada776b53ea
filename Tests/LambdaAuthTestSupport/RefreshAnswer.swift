import LambdaAuth

/// What one `refresh` answered, as the family tests compare it: the refresh token handed out and
/// the lifetime it was promised, or the contract's error code.
public enum RefreshAnswer: Equatable, Sendable, CustomStringConvertible {
    case token(String, expiresIn: Int64)
    case error(String)

    public var token: String? {
        if case .token(let token, _) = self { return token }
        return nil
    }

    public var code: String? {
        if case .error(let code) = self { return code }
        return nil
    }

    public var description: String {
        switch self {
        case .token(let token, let expiresIn): return "token …\(token.suffix(8)) (\(expiresIn) s)"
        case .error(let code): return code
        }
    }
}

extension InProcessFlows {
    /// Refreshes in this process and says what came back, whichever way it went.
    public func refreshAnswer(_ refreshToken: String) -> RefreshAnswer {
        do {
            let body = try refresh(refreshToken)
            guard let token = body["tokens"]?["refreshToken"]?.stringValue,
                  let expiresIn = body["tokens"]?["refreshTokenExpiresIn"]?.int64Value else { return .error("malformed answer: \(body)") }
            return .token(token, expiresIn: expiresIn)
        } catch {
            return .error(error.code.rawValue)
        }
    }
}

extension FlowWorld {
    /// The handlers in this process on the world's store and clock as they are now (build again
    /// after `advanceClock`).
    public func inProcess() throws -> InProcessFlows { try InProcessFlows(self) }

    /// The world's REFRESH# items of one family, every one stored (expired ones too).
    public func storedTokenItems(userID: String, family: String) throws -> [Item] {
        try allItems(at: 0).filter {
            $0["PK"]?.stringValue == "USER#\(userID)" && $0["SK"]?.stringValue?.hasPrefix("REFRESH#") == true
                && $0["familyId"]?.stringValue == family
        }
    }
}
