"""A regular expression for exactly the datetimes a field accepts: real calendar dates inside its bounds.

The README's `[datetime]` rule admits `YYYY-MM-DD hh:mm:ss` strings naming a real date and time
(no February 30, February 29 only in leap years) between inclusive bounds compared as strings.
Standard JSON Schema has no datetime bounds, so the OpenAPI export states all of it in one
`pattern`: tools that generate data from the document (schemathesis) then produce only valid
values in positive mode and precisely the invalid ones in negative mode. The expression is built
by splitting the bounded range at its year, day and time boundaries, like a digit-range regex.
"""

from __future__ import annotations

import calendar
import datetime as dt
import functools

FORMAT = "%Y-%m-%d %H:%M:%S"
FIRST = dt.datetime(1, 1, 1, 0, 0, 0)  # year 0000 is no calendar year
LAST = dt.datetime(9999, 12, 31, 23, 59, 59)
_ANY_TIME = r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d"
_LONG, _SHORT = (1, 3, 5, 7, 8, 10, 12), (4, 6, 9, 11)
# Month and day of every year but February 29.
_COMMON_DAYS = (
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)"
    r"|02-(?:0[1-9]|1\d|2[0-8]))"
)
# Every leap year 0001-9999: divisible by 4 and not by 100, or by 400 (0000 is excluded).
_ANY_LEAP_YEAR = r"(?:\d\d(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"


def _alt(parts: list[str]) -> str:
    parts = [p for p in parts if p]
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def number_range(lo: int, hi: int, width: int) -> str:
    """Zero-padded integers lo..hi of `width` digits (lo <= hi)."""
    a, b = f"{lo:0{width}d}", f"{hi:0{width}d}"
    if width == 0:
        return ""
    if a == b:
        return a
    if a[0] == b[0]:
        return a[0] + number_range(int(a[1:]), int(b[1:]), width - 1)
    rest = width - 1
    top = 10**rest - 1
    parts: list[str] = []
    if a[1:] == "0" * rest:
        first = int(a[0])
    else:
        parts.append(a[0] + number_range(int(a[1:]), top, rest))
        first = int(a[0]) + 1
    last = int(b[0]) if b[1:] == "9" * rest else int(b[0]) - 1
    if first <= last:
        digit = str(first) if first == last else f"[{first}-{last}]"
        parts.append(digit + (rf"\d{{{rest}}}" if rest > 1 else r"\d" if rest else ""))
    if last < int(b[0]):
        parts.append(b[0] + number_range(0, int(b[1:]), rest))
    return _alt(parts)


def _times(lo: dt.time, hi: dt.time) -> str:
    """hh:mm:ss from lo to hi inclusive."""
    if (lo.hour, lo.minute, lo.second) == (0, 0, 0) and (hi.hour, hi.minute, hi.second) == (23, 59, 59):
        return _ANY_TIME
    a, b = lo.hour * 3600 + lo.minute * 60 + lo.second, hi.hour * 3600 + hi.minute * 60 + hi.second
    return _clock(a, b, (3600, 60, 1), (24, 60, 60))


def _clock(a: int, b: int, units: tuple[int, ...], radix: tuple[int, ...]) -> str:
    """Fixed-width mixed-radix values a..b (in the smallest unit), two digits per component, ':'-separated."""
    unit, rest_units = units[0], units[1:]
    ha, hb = a // unit, b // unit
    if not rest_units:
        return number_range(ha, hb, 2)
    span = unit - 1
    ra, rb = a % unit, b % unit
    if ha == hb:
        return f"{ha:02d}:" + _clock(ra, rb, rest_units, radix[1:])
    parts: list[str] = []
    first, last = ha, hb
    if ra:
        parts.append(f"{ha:02d}:" + _clock(ra, span, rest_units, radix[1:]))
        first += 1
    if rb != span:
        last -= 1
    if first <= last:
        parts.append(number_range(first, last, 2) + ":" + _clock(0, span, rest_units, radix[1:]))
    if rb != span:
        parts.append(f"{hb:02d}:" + _clock(0, rb, rest_units, radix[1:]))
    return _alt(parts)


def _month_days(year: int, lo: dt.date, hi: dt.date) -> str:
    """MM-DD of `year` from lo to hi inclusive (both in `year`)."""
    if lo.month == hi.month:
        return f"{lo.month:02d}-" + number_range(lo.day, hi.day, 2)
    parts = []
    for m in range(lo.month, hi.month + 1):
        first = lo.day if m == lo.month else 1
        last = hi.day if m == hi.month else calendar.monthrange(year, m)[1]
        parts.append(f"{m:02d}-" + number_range(first, last, 2))
    return _alt(parts)


def _whole_years(y1: int, y2: int) -> str:
    """Every valid YYYY-MM-DD of the years y1..y2."""
    if (y1, y2) == (1, 9999):
        leaps = _ANY_LEAP_YEAR
    else:
        found = [f"{y:04d}" for y in range(y1, y2 + 1) if calendar.isleap(y)]
        leaps = _alt(found) if found else ""
    common = number_range(y1, y2, 4) + "-" + _COMMON_DAYS
    return _alt([common, leaps + "-02-29" if leaps else ""])


def _dates(lo: dt.date, hi: dt.date) -> str:
    """Valid YYYY-MM-DD from lo to hi inclusive."""
    if lo.year == hi.year:
        if (lo.month, lo.day, hi.month, hi.day) == (1, 1, 12, 31):
            return _whole_years(lo.year, hi.year)
        return f"{lo.year:04d}-" + _month_days(lo.year, lo, hi)
    parts = []
    y1, y2 = lo.year, hi.year
    if (lo.month, lo.day) != (1, 1):
        parts.append(f"{lo.year:04d}-" + _month_days(lo.year, lo, dt.date(lo.year, 12, 31)))
        y1 += 1
    if (hi.month, hi.day) != (12, 31):
        y2 -= 1
    if y1 <= y2:
        parts.append(_whole_years(y1, y2))
    if (hi.month, hi.day) != (12, 31):
        parts.append(f"{hi.year:04d}-" + _month_days(hi.year, dt.date(hi.year, 1, 1), hi))
    return _alt(parts)


def _day(d: dt.date) -> str:
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def datetime_pattern(after: str | None = None, before: str | None = None) -> str:
    """An anchored regex matching exactly the valid datetimes d with after <= d <= before."""
    lo = dt.datetime.strptime(after, FORMAT) if after else FIRST
    hi = dt.datetime.strptime(before, FORMAT) if before else LAST
    if lo > hi:
        return "^(?!)$"  # no value is valid
    midnight, last_second = dt.time(0, 0, 0), dt.time(23, 59, 59)
    if lo.date() == hi.date():
        body = _day(lo.date()) + " " + _times(lo.time(), hi.time())
    else:
        parts = []
        first_day, last_day = lo.date(), hi.date()
        if lo.time() != midnight:
            parts.append(_day(lo.date()) + " " + _times(lo.time(), last_second))
            first_day += dt.timedelta(days=1)
        if hi.time() != last_second:
            last_day -= dt.timedelta(days=1)
        if first_day <= last_day:
            parts.append(_dates(first_day, last_day) + " " + _ANY_TIME)
        if hi.time() != last_second:
            parts.append(_day(hi.date()) + " " + _times(midnight, hi.time()))
        body = _alt(parts)
    return f"^{body}$"


_USUAL = (dt.datetime(2020, 1, 1), dt.datetime(2030, 12, 31, 23, 59, 59))  # where an unbounded side's values lie


@functools.lru_cache(maxsize=4096)
def parse_datetime(stamp: str) -> dt.datetime:
    """A well-formed `YYYY-MM-DD hh:mm:ss` as a datetime; remembered, since suites parse the same bounds thousands
    of times (a ValueError for anything else, as `strptime` raises)."""
    return dt.datetime.strptime(stamp, FORMAT)


def datetime_text(t: dt.datetime) -> str:
    """`t` as `YYYY-MM-DD hh:mm:ss`, the year zero-padded (strftime does not pad years before 1000)."""
    return f"{_day(t.date())} {t.hour:02d}:{t.minute:02d}:{t.second:02d}"


def unpadded_probe(after: str | None, before: str | None) -> str | None:
    """A valid datetime inside the bounds whose seconds are 07, its minute strictly between the bounds' minutes.

    Written without the seconds' leading zero (`... 10:15:7`) it still compares inside the bounds as a
    string, so only the format can reject it (`strptime` alone accepts it). None when the window is
    too narrow to hold such a minute.
    """
    lo = dt.datetime.strptime(after, FORMAT) if after else None
    hi = dt.datetime.strptime(before, FORMAT) if before else None
    year = dt.timedelta(days=365)
    if lo is None:
        lo = _USUAL[0] if hi is None else min(_USUAL[0], hi - year) if hi >= FIRST + year else FIRST
    if hi is None:
        hi = max(_USUAL[1], lo + year) if lo <= LAST - year else LAST
    mid = lo + (hi - lo) / 2
    probe = mid.replace(second=7, microsecond=0)
    if not datetime_text(lo)[:16] < datetime_text(probe)[:16] < datetime_text(hi)[:16]:
        return None
    return datetime_text(probe)
