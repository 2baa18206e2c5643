// Credentials out of what is printed. A URL may carry a user name and password
// (https://user:secret@host/): libcurl and libdebuginfod take them from the URL the user gave
// (`export --otlp`, $DEBUGINFOD_URLS), and every message that names such a URL would copy the
// secret into logs, CI output and terminal scrollback.
#ifndef HANGWATCH_SYMBOLS_URL_CREDENTIALS_H_
#define HANGWATCH_SYMBOLS_URL_CREDENTIALS_H_

#include <string>
#include <string_view>

namespace hangwatch::symbols {

// `text` (a URL, or a message naming URLs) with the user information of every URL in it
// replaced by "***": "https://user:pw@host/x" -> "https://***@host/x". A URL is anything after
// "://" up to the next '/', '?', '#', white space, quote or angle bracket; the user
// information is its part before the last '@'. Text without credentials is unchanged.
std::string RedactUrlCredentials(std::string_view text);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_URL_CREDENTIALS_H_
