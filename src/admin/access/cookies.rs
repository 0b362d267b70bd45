//! The cookies of the sign-in steps, before any session exists: their names, and how they are
//! made (signed with the server's key), read back and spent.

use crate::admin::error::AdminError;
use actix_web::HttpRequest;
use actix_web::HttpResponse;
use actix_web::cookie::{Cookie, CookieJar, Key, SameSite};

/// The sign-in form's CSRF token travels in this signed cookie, not in a session: a visitor
/// who only looks at the form makes us store nothing.
pub const LOGIN_COOKIE: &str = "inklink_login";
/// A sign-in waiting for its second step (`pending`).
pub const PENDING_COOKIE: &str = "inklink_2fa";
/// A sign-in on its way through the single sign-on provider (`sso`).
pub const FLIGHT_COOKIE: &str = "inklink_sso";

/// A cookie of the sign-in steps, signed with `key`: on `/admin`, HttpOnly, SameSite=Lax (a
/// provider's redirect back is a top-level navigation, which carries it), for `seconds`
/// (`None`: the browser's session).
pub fn signed_cookie(
    key: &Key,
    name: &'static str,
    value: String,
    seconds: Option<i64>,
    secure: bool,
) -> Cookie<'static> {
    let mut cookie = Cookie::build(name, value)
        .path("/admin")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(secure);
    if let Some(seconds) = seconds {
        cookie = cookie.max_age(actix_web::cookie::time::Duration::seconds(seconds));
    }
    let mut jar = CookieJar::new();
    jar.signed_mut(key).add(cookie.finish());
    jar.get(name).cloned().expect("the cookie just added")
}

/// The value of the cookie `name` on `req`, if it is one we signed.
pub fn read_signed(req: &HttpRequest, key: &Key, name: &str) -> Option<String> {
    let mut jar = CookieJar::new();
    jar.add_original(req.cookie(name)?);
    Some(jar.signed(key).get(name)?.value().to_owned())
}

/// `response` with each of `cookies` set (or, for a removal cookie, deleted).
pub fn with_cookies<'c>(
    mut response: HttpResponse,
    cookies: impl IntoIterator<Item = Cookie<'c>>,
) -> Result<HttpResponse, AdminError> {
    for cookie in cookies {
        response
            .add_cookie(&cookie)
            .map_err(|err| AdminError::Session(err.to_string()))?;
    }
    Ok(response)
}

/// The cookie that deletes the sign-in step's cookie `name`.
pub fn spent(name: &'static str) -> Cookie<'static> {
    let mut spent = Cookie::build(name, "").path("/admin").finish();
    spent.make_removal();
    spent
}
