/// A user's `appMetadata` (contract section 17): a JSON object that only operators set (`authctl
/// users set-metadata`), shown in the user object and carried by every access token issued after
/// it as the claim `app_metadata`, for the app's own APIs to authorize by (a role, a plan).
public enum AppMetadata {
    /// Compact UTF-8 JSON, as stored and as signed into every access token: a bound on what each
    /// token (and every request header that carries one) grows by.
    public static let maximumBytes = 2048

    /// Operator input: a JSON object of at most `maximumBytes` in its compact form; `{}` clears.
    public static func parse(_ text: String) throws(AuthError) -> [String: JSONValue] {
        let value: JSONValue
        do {
            value = try JSONValue.parse(Array(text.utf8))
        } catch {
            throw AuthError(.invalidRequest, "app metadata must be a JSON object: \(error)")
        }
        guard case .object(let members) = value else { throw AuthError(.invalidRequest, "app metadata must be a JSON object") }
        let size = value.serializedBytes().count
        guard size <= maximumBytes else {
            throw AuthError(.invalidRequest, "app metadata is \(size) bytes as compact JSON; at most \(maximumBytes) are allowed")
        }
        return members
    }

    /// The stored form (the PROFILE item's `appMetadata` string); nil for none.
    static func stored(_ metadata: [String: JSONValue]) -> String? {
        metadata.isEmpty ? nil : JSONValue.object(metadata).serialized()
    }

    /// What a PROFILE item holds; a value that does not read back as an object counts as none
    /// (only this code writes it).
    static func read(_ text: String?) -> [String: JSONValue] {
        guard let text, case .object(let members)? = try? JSONValue.parse(Array(text.utf8)) else { return [:] }
        return members
    }
}

extension AccountStore {
    /// Replaces the user's app metadata, conditional on the profile version read (as every
    /// profile write), bumping it: every session's next refresh sees the change. nil: no such
    /// user (or one being deleted).
    func setAppMetadata(_ metadata: [String: JSONValue], userID: String, retry: OptimisticRetry, now: Int64) throws(AuthError) -> UserView? {
        try retry.run("app metadata") { () throws(AuthError) -> UserView?? in
            guard var user = try self.user(userID), user.profile.deletionRequestedAt == nil else { return .some(nil) }
            let stored = AppMetadata.stored(metadata)
            var values: [String: AttributeValue] = [":read": .n(user.profile.version), ":one": .n(1), ":now": .s(Timestamps.format(now))]
            var update = "SET #version = #version + :one, updatedAt = :now"
            if let stored {
                values[":metadata"] = .s(stored)
                update += ", appMetadata = :metadata"
            } else {
                update += " REMOVE appMetadata"
            }
            do throws(TableError) {
                try table.updateItem(Keys.profileKey(userID), update: update,
                                     condition: "#version = :read AND attribute_not_exists(deletionRequestedAt)",
                                     attributes: ExpressionAttributes(names: ["#version": "version"], values: values), returnValues: .none)
            } catch .conditionFailed {
                return nil  // changed meanwhile: read again
            } catch {
                throw error.authError
            }
            user.profile.appMetadata = metadata
            user.profile.version += 1
            user.profile.updatedAt = now
            carryToLiveTokens(user, replacing: user.profile.version - 1)
            return .some(user)
        }
    }

    /// The live refresh tokens' copies of the user, moved to the new version, so that each
    /// session's next refresh carries the change with no extra request. Only copies of the version
    /// just replaced are moved (a later write's copy is newer); one that cannot be moved makes
    /// that refresh read the user again, as after any profile change, which costs two requests.
    private func carryToLiveTokens(_ user: UserView, replacing version: Int64) {
        guard let tokens = try? refreshTokens(of: user.profile.userID) else { return }
        var item: Item = [:]
        UserSnapshot(user).store(in: &item)
        guard let view = item["userView"], let newVersion = item["profileVersion"] else { return }
        for token in tokens where token.status == .active {
            _ = try? table.updateItem(
                token.key, update: "SET userView = :view, profileVersion = :new",
                condition: "#status = :active AND profileVersion = :old",
                attributes: ExpressionAttributes(names: ["#status": "status"],
                                                 values: [":view": view, ":new": newVersion, ":old": .n(version),
                                                          ":active": .s(RefreshTokenStatus.active.rawValue)]),
                returnValues: .none)
        }
    }
}
