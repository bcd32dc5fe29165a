"""The laptop recipe's page in parts (usebench/report/laptop.py assembles them): its units as the store holds them
(``units``), the effects with their intervals and the page's wording rule (``stats``, ``effects``), the curves and
new heads (``curves``) and the cost against the prediction (``cost``)."""
