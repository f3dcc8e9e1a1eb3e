//! Database URLs as they may be shown: with the password masked. The only
//! form in which a URL reaches a log or an error message.

/// `url` with its password, if any, replaced by `***`: the only form in
/// which a database URL is logged or reported.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "<unparsable URL>".to_owned();
    };
    // The authority ends at the first '/', '?' or '#'; credentials end at
    // its last '@'.
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let Some(at) = authority.rfind('@') else {
        return strip_query_password(url);
    };
    let (userinfo, host) = authority.split_at(at);
    let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
    let masked = if userinfo.contains(':') {
        format!("{user}:***")
    } else {
        user.to_owned()
    };
    strip_query_password(&format!("{scheme}://{masked}{host}{tail}"))
}

/// Masks a `password=` query parameter (libpq URLs accept one).
fn strip_query_password(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
            _ => p.to_owned(),
        })
        .collect();
    format!("{base}?{}", params.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_survive_redaction() {
        assert_eq!(
            redact_url("postgres://ann:s3cr%40t@db:5432/app"),
            "postgres://ann:***@db:5432/app"
        );
        assert_eq!(
            redact_url("postgres://ann:p@ss@db/app?sslmode=require"),
            "postgres://ann:***@db/app?sslmode=require"
        );
        assert_eq!(
            redact_url("postgres://db/app?user=ann&password=hunter2"),
            "postgres://db/app?user=ann&password=***"
        );
        assert_eq!(redact_url("postgres://ann@db/app"), "postgres://ann@db/app");
        assert_eq!(redact_url("not a url"), "<unparsable URL>");
    }
}
