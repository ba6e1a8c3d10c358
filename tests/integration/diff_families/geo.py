"""Geo commands for the differential test (see __init__.py).

Members have fixed, distinct positions around a few cities (so that sorted results have no
distance ties, whose order Redis leaves to qsort); searches are centred on the cities or on
members, with radii and boxes from a few meters to thousands of kilometers. The keys are the
shared ones, so searches also meet sorted sets whose scores are not geohashes and other types."""

PLACES = {
    "Palermo": ("13.361389", "38.115556"), "Catania": ("15.087269", "37.502669"),
    "Agrigento": ("13.583333", "37.316667"), "Paris": ("2.3522", "48.8566"),
    "Versailles": ("2.1301", "48.8049"), "London": ("-0.1276", "51.5072"),
    "Oxford": ("-1.2577", "51.752"), "NYC": ("-73.9857", "40.7484"),
    "Newark": ("-74.1724", "40.7357"), "Sydney": ("151.2093", "-33.8688"),
    "Tromso": ("18.9553", "69.6492"), "Quito": ("-78.4678", "-0.1807"),
    "Suva": ("178.4419", "-18.1248"), "Fiji2": ("-179.9", "-16.5"),
    "p1": ("13.4", "38.1"), "p2": ("13.36", "38.12"), "p3": ("2.35", "48.86"),
}
CENTERS = [("15", "37"), ("13.361389", "38.115556"), ("2.3", "48.8"), ("-0.5", "51.5"),
           ("-74", "40.7"), ("151", "-34"), ("179.9", "-17"), ("19", "69.6"), ("0", "0"),
           ("-180", "85.05112878"), ("181", "10"), ("10", "86"), ("x", "1"), ("1", "")]
RADII = ["0", "1", "100", "5000", "50000", "200000", "1000", "3000", "-1", "x", "0.5", "150",
         "20", "300", "500", "2000", "8000", "20000"]
UNITS = ["m", "km", "km", "km", "ft", "mi", "mi", "KM", "Mi", "yd"]
MEMBERS = list(PLACES) * 3 + ["nope", "a", "b"]


def choices(g):
    rng = g.rng
    recent = []  # keys GEOADD wrote lately: most reads go there, so that they find something

    def written(key):
        recent.append(key)
        del recent[:-4]
        return key

    def src():
        return g.pick(recent) if recent and rng.random() < 0.7 else g.key()

    def place():
        return g.pick(list(PLACES))

    def geoadd():
        opts = []
        for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):
            opts.append(g.pick(["NX", "XX", "CH", "ch", "nx", "CH"])
                        if rng.random() < 0.95 else "GT")
        triples = []
        for _ in range(rng.choice((1, 1, 2, 3))):
            if rng.random() < 0.06:
                triples += [g.pick(["200", "10", "x", "-180.1"]), g.pick(["86", "10", "-85.1"]),
                            place()]
            else:
                name = place()
                triples += [*PLACES[name], name]
        if rng.random() < 0.04:
            triples.pop()
        return ["GEOADD", written(g.key()), *opts, *triples]

    def geoadd_all():
        # Every place at once (in a random order), so that searches have something to find.
        names = list(PLACES)
        rng.shuffle(names)
        return ["GEOADD", written(g.key()), *[x for n in names for x in (*PLACES[n], n)]]

    def members():
        return [g.pick(MEMBERS) for _ in range(rng.randint(1, 4))]

    def unit():
        return [g.pick(UNITS)] if rng.random() < 0.97 else []

    def opts(store_ok):
        out = []
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            r = rng.random()
            if r < 0.45:
                out.append(g.pick(["WITHDIST", "WITHCOORD", "WITHHASH", "withdist"]))
            elif r < 0.65:
                out.append(g.pick(["ASC", "DESC", "asc"]))
            elif r < 0.85:
                out += ["COUNT", g.pick(["1", "2", "3", "10", "0", "-1", "x"])]
                if rng.random() < 0.3:
                    out.append("ANY")
            elif r < 0.88:
                out.append("ANY")
            elif store_ok and r < 0.96:
                out += [g.pick(["STORE", "STOREDIST"]), g.key()]
            else:
                out.append(g.pick(["BOGUS", "STORE", "COUNT"]))
        return out

    def radius_args():
        return [g.pick(RADII), *unit()]

    def center():
        return list(g.pick(CENTERS[:9]) if rng.random() < 0.9 else g.pick(CENTERS))

    def georadius():
        name = g.pick(["GEORADIUS", "GEORADIUS_RO"])
        return [name, src(), *center(), *radius_args(), *opts(name == "GEORADIUS")]

    def georadiusbymember():
        name = g.pick(["GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO"])
        return [name, src(), g.pick(MEMBERS), *radius_args(),
                *opts(name == "GEORADIUSBYMEMBER")]

    def search_args():
        parts = []
        r = rng.random()
        if r < 0.5:
            parts.append(["FROMLONLAT", *center()])
        elif r < 0.95:
            parts.append(["FROMMEMBER", g.pick(MEMBERS)])
        if rng.random() < 0.03:
            parts.append(["FROMLONLAT", *center()])
        r = rng.random()
        if r < 0.5:
            parts.append(["BYRADIUS", *radius_args()])
        elif r < 0.95:
            parts.append(["BYBOX", g.pick(RADII), g.pick(RADII), *unit()])
        if rng.random() < 0.03:
            parts.append(["BYRADIUS", "10", "km"])
        rng.shuffle(parts)
        return [a for p in parts for a in p]

    def geosearch():
        return ["GEOSEARCH", src(), *search_args(), *opts(False)]

    def geosearchstore():
        extra = opts(False)
        if rng.random() < 0.3:
            extra.append("STOREDIST")
        return ["GEOSEARCHSTORE", g.key(), src(), *search_args(), *extra]

    return [
        (6, geoadd),
        (2, geoadd_all),
        (1, lambda: ["DEL", g.key()]),
        (2, lambda: ["GEOPOS", src(), *members()]),
        (2, lambda: ["GEOHASH", src(), *members()]),
        (2, lambda: ["GEODIST", src(), g.pick(MEMBERS), g.pick(MEMBERS), *unit()[:1],
                     *(["x"] if rng.random() < 0.03 else [])]),
        (3, georadius),
        (2, georadiusbymember),
        (4, geosearch),
        (2, geosearchstore),
        (0.3, lambda: ["ZRANGE", g.key(), "0", "-1", "WITHSCORES"]),
    ]
