// The contract's response objects, beside the handlers that answer with them: records map items
// and nothing else, so a change to what a response shows touches this file alone.

/// The `user` object of every response: a user as read (its profile and identities), which the
/// flows pass around and a refresh token's `UserSnapshot` keeps a copy of.
struct UserView {
    var profile: UserProfile
    var identities: [LinkedIdentity]
    /// Read with the profile, never shown in the `user` object.
    var secondFactor = SecondFactorItems()

    var json: JSONValue {
        var fields: [String: JSONValue] = [
            "id": .string(profile.userID),
            "email": profile.email.map(JSONValue.string) ?? .null,
            "emailVerified": .bool(profile.emailVerified),
            "displayName": profile.displayName.map(JSONValue.string) ?? .null,
            "pictureUrl": profile.pictureURL.map(JSONValue.string) ?? .null,
            "identities": .array(identities.sorted(by: LinkedIdentity.linkOrder).map(\.json)),
            "createdAt": .string(Timestamps.format(profile.createdAt)),
            "lastSignInAt": .string(Timestamps.format(profile.lastSignInAt)),
        ]
        // Only guests carry the field: a full user's object is as it always was.
        if profile.isGuest { fields["isGuest"] = .bool(true) }
        // Likewise only users an operator gave metadata to.
        if !profile.appMetadata.isEmpty { fields["appMetadata"] = .object(profile.appMetadata) }
        return .object(fields)
    }
}

extension LinkedIdentity {
    /// Oldest link first; links made in the same second in the providers' declaration order.
    fileprivate static func linkOrder(_ lhs: LinkedIdentity, _ rhs: LinkedIdentity) -> Bool {
        (lhs.linkedAt, lhs.provider.declarationIndex, lhs.provider.rawValue) < (rhs.linkedAt, rhs.provider.declarationIndex, rhs.provider.rawValue)
    }

    /// An entry of the `user` object's `identities`.
    var json: JSONValue {
        var json: [String: JSONValue] = ["provider": .string(provider.rawValue), "subject": .string(subject),
                                         "email": email.map(JSONValue.string) ?? .null, "linkedAt": .string(Timestamps.format(linkedAt))]
        if let emailDeliverable { json["emailDeliverable"] = .bool(emailDeliverable) }
        return .object(json)
    }
}

extension SessionRecord {
    /// The `session` object of a sign-in's response.
    var json: JSONValue {
        ["id": .string(sessionID), "createdAt": .string(Timestamps.format(createdAt))]
    }
}

extension IssuedTokens {
    /// The `tokens` object of a sign-in's and a refresh's response.
    var json: JSONValue {
        ["accessToken": .string(accessToken), "tokenType": "Bearer", "expiresIn": .number(accessTokenLifetime),
         "refreshToken": .string(refreshToken), "refreshTokenExpiresIn": .number(refreshTokenLifetime)]
    }
}

extension SessionSummary {
    /// An entry of `sessions`' list.
    var json: JSONValue {
        ["id": .string(session.sessionID), "device": .object(session.device.mapValues(JSONValue.string)),
         "createdAt": .string(Timestamps.format(session.createdAt)), "lastActiveAt": .string(Timestamps.format(lastActiveAtMilliseconds / 1000)),
         "current": .bool(current)]
    }
}

extension PasskeyStore.Listed {
    /// An entry of the passkey `list` action's answer, and `register`'s `passkey`.
    var json: JSONValue {
        ["id": .string(passkeyID), "name": .string(name), "createdAt": .string(Timestamps.format(createdAt)),
         "lastUsedAt": lastUsedAt.map { .string(Timestamps.format($0)) } ?? .null]
    }
}

extension PasskeyRegistrationOptions {
    /// PublicKeyCredentialCreationOptionsJSON (WebAuthn Level 3 §5.4), the `register-options` answer.
    var json: JSONValue {
        let excludeCredentials: [JSONValue] = excluded.map { passkey in
            var descriptor: [String: JSONValue] = ["type": "public-key", "id": .string(Base64.urlEncoded(passkey.credentialID))]
            if !passkey.transports.isEmpty { descriptor["transports"] = .array(passkey.transports.map(JSONValue.string)) }
            return .object(descriptor)
        }
        return ["publicKey": [
            "rp": ["id": .string(settings.relyingPartyID), "name": .string(settings.relyingPartyName)],
            "user": ["id": .string(Base64.urlEncoded(userHandle)), "name": .string(userName), "displayName": .string(userDisplayName)],
            "challenge": .string(Base64.urlEncoded(challenge)),
            "pubKeyCredParams": .array(COSEAlgorithm.allCases.map { ["type": "public-key", "alg": .number($0.rawValue)] }),
            "timeout": .number(PasskeyStore.challengeLifetime * 1000),
            "excludeCredentials": .array(excludeCredentials),
            "authenticatorSelection": ["residentKey": "required", "requireResidentKey": true,
                                       "userVerification": .string(settings.userVerificationRequired ? "required" : "preferred")],
            "attestation": "none",
        ]]
    }
}

extension PasskeyLoginOptions {
    /// PublicKeyCredentialRequestOptionsJSON for a discoverable credential, the `login-options` answer.
    var json: JSONValue {
        ["publicKey": [
            "challenge": .string(Base64.urlEncoded(challenge)), "timeout": .number(PasskeyStore.challengeLifetime * 1000),
            "rpId": .string(settings.relyingPartyID), "allowCredentials": [],
            "userVerification": .string(settings.userVerificationRequired ? "required" : "preferred"),
        ]]
    }
}
